-- SmallBank (Alomari et al.): accounts with a savings and a checking balance.
CREATE TABLE Account (
    Name       VARCHAR(64) NOT NULL UNIQUE,
    CustomerID INTEGER PRIMARY KEY
);

CREATE TABLE Savings (
    CustomerID INTEGER PRIMARY KEY,
    Balance    NUMERIC(12, 2) NOT NULL,
    CONSTRAINT fS FOREIGN KEY (CustomerID) REFERENCES Account (CustomerID)
);

CREATE TABLE Checking (
    CustomerID INTEGER PRIMARY KEY,
    Balance    NUMERIC(12, 2) NOT NULL,
    CONSTRAINT fC FOREIGN KEY (CustomerID) REFERENCES Account (CustomerID)
);
